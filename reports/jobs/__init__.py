"""The report jobs: ``traffic``, ``delays``, ``consumers``, ``retries`` (and the POP helpers of
:mod:`.pop`). Each has ``NAME``, ``STAGES``, ``COLUMNS`` (the commitlog columns it reads; none
for ``consumers``) and ``run(spark, source, progress, **options)``."""

#: The reports ``rmq-emu report all`` runs, in order.
REPORTS = ("traffic", "delays", "consumers", "retries")
