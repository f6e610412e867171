"""The launcher side of every system: its options (one typed :class:`~parties.params.Params`),
its plan of the parties and the deployment's parameters, the result read off the parties'
reports, its summary and its audit. The registry is :mod:`parties.systems.registry`; the
party programs are :mod:`parties.programs`."""
