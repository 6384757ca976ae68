"""Recording the remoting traffic of the name server and broker ports (``rmq-emu up
--record FILE``): :mod:`.format` declares the file, :mod:`.recorder` writes it as frames pass."""
