"""Adapters for agent frameworks. Each subpackage imports its framework only when it is used."""
