"""The lowering pipeline after parsing: target checks, dispatch, layout application,
flattening, simplification and verification (see :mod:`tilewise.passes.pipeline`)."""
