"""LLVM lowerings of the PTX-table entries, one module per family; each registers its
lowerings with ``@lowering`` (:mod:`tilewise.codegen.registry`), and the registry imports
every module of this package. :mod:`.generated` builds the thin ones from the table."""
