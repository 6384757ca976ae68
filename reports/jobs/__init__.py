"""Report jobs: each module has ``run(spark, store, progress, **options) -> Report``."""
