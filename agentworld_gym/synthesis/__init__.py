"""Synthesizers: sources -> validated EnvSpecs and tasks (see each subpackage)."""
