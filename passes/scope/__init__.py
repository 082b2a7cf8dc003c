"""TF-parser scope fusion: the scope engine, the built-in rules (one module each) and user rule files.

The catalog (passes/registry.py) imports every module here; each built-in rule's module registers it.
"""
