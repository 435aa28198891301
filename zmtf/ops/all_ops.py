"""Import every op module, so that ``OP_DEFS`` holds every op zmtf defines.

A process that receives graphs (a worker, a GraphDef import) needs the whole table, not only
the ops its own code happened to build; importing ``zmtf.ops`` alone loads a core set. The
modules are found by listing this folder: a new op module needs no entry here.
"""

import importlib
import pathlib
import pkgutil

for _module in pkgutil.iter_modules([str(pathlib.Path(__file__).parent)]):
    importlib.import_module(f"{__package__}.{_module.name}")
