"""User input (TOML, CLI strings) -> frozen, validated models. Unknown keys are errors."""
