"""Python constructs a kernel may not use, each with what to write instead."""

import ast

GENERIC_HINT = "write the kernel with for/if, assignments and T.*/Tx.* calls"
REJECTED = {  # construct -> (name, what to write instead)
    ast.Try: ("try/except", "check conditions with `if`; errors cannot be caught on the GPU"),
    ast.With: ("with blocks", None), ast.Raise: ("raise", None),
    ast.Lambda: ("lambda", "compute the value inline or in a Python helper at compile time"),
    ast.FunctionDef: ("nested functions", "define helpers outside the kernel"),
    ast.ClassDef: ("classes", None),
    ast.Return: ("return", "guard the rest of the kernel with `if` instead"),
    ast.Global: ("global", None), ast.Nonlocal: ("nonlocal", None),
    ast.Import: ("import", "import at module level"),
    ast.ImportFrom: ("import", "import at module level"), ast.Delete: ("del", None),
    ast.AsyncFunctionDef: ("async functions", None), ast.AsyncFor: ("async for", None),
    ast.AsyncWith: ("async with", None), ast.Yield: ("yield", None),
    ast.YieldFrom: ("yield", None), ast.Await: ("await", None),
    ast.NamedExpr: ("the walrus operator", "assign on its own line"),
    ast.Assert: ("assert", "check at compile time outside the kernel"),
    ast.JoinedStr: ("f-strings", None), ast.Set: ("sets", None),
    ast.SetComp: ("set comprehensions", None), ast.DictComp: ("dict comprehensions", None),
}
