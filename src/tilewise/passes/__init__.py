"""The passes after dispatch: target checks, layout application, flattening,
simplification and dead-code removal. :mod:`tilewise.pipeline` lists them in order."""
