"""What a party process runs: one program per system (:mod:`parties.programs.registry`), each
reading its system's parameters from the deployment file as one typed object, validated once.

Nothing here starts parties or reads another party's input: the launchers, which plan runs
and audit them, are :mod:`parties.systems`, which a party process never imports.
"""
