"""Customized symbolic models (001 sec. 7.5, 7.6.2), their C/Python code generation and the compiled-program cache."""
