"""C-style batch rules, one module per op family; ``_helpers`` is the rule authors' toolbox.

Each family module registers its rules when it is imported (``batchtensor/__init__`` imports
them all). This package module itself imports nothing, so that the boxed fallbacks, a layer
below the rules, can use ``rules._helpers`` without loading the rules.
"""
