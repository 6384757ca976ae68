"""Recording the remoting traffic of the name server and broker ports (``rmq-emu up
--record FILE``): :mod:`.format` declares the file, :mod:`.recorder` writes it as frames pass,
:mod:`.cli` lists it. Replaying it (``rmq-emu replay``): :mod:`.plan` reads the clients'
requests and recorded answers, :mod:`.compare` judges answers by shape, :mod:`.replay` sends
them to a target, :mod:`.cli_replay` prints the comparison."""
