"""What the tests share: ``child`` runs code in a fresh interpreter (``childlib`` is that
interpreter's side), ``errors`` asserts a typed error with values and a Fix, ``kernels``
holds the WGSL kernels several files use. tests/ is on sys.path (pyproject's pytest
options), in children too; scenarios a child runs whole are modules of tests/scenarios/.
"""
