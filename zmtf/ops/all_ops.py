"""Import every op module, so that ``OP_DEFS`` holds every op zmtf defines.

A process that receives graphs (a worker, a GraphDef import) needs the whole table, not only
the ops its own code happened to build; importing ``zmtf.ops`` alone loads a core set.
"""

import importlib
import pkgutil

import zmtf.ops

for _module in pkgutil.iter_modules(zmtf.ops.__path__):
    importlib.import_module(f"zmtf.ops.{_module.name}")
