"""Scenarios a child interpreter runs whole (``support.child.run_scenario``): each module
reports one JSON value with ``support.childlib.report``; its test file asserts on it.
They are modules, not strings, so that ruff and mypy read them."""
