"""The core: the line format, records, values, schemas, validators, rules, config, errors and figures.

Imports nothing else of tracker: no I/O policy, no plugins, no store.
"""
