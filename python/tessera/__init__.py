"""tessera: plans, models and runs distributed deep-learning training and serving.

Python face of the tessera C++ library. Systems are submodules that mirror the CLI's verbs:

    import tessera
    plan = tessera.zellige.plan([75600, 3600, 3600], tessera.zellige.Cluster.preset("a800x16"))

Errors in the inputs raise ValueError (or TypeError for wrong types) with the same one-line
messages the `tessera` command prints.
"""

from tessera import zellige

__all__ = ["zellige"]
__version__ = "0.1.0"
