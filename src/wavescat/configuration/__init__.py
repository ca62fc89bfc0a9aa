"""The config, read and checked once: the schema (config.schema.yaml, whose `default:` entries
wavescat.defaults reads) and its validator, config files as the user wrote them, parameter
studies expanded into cases, and the typed Case every stage takes. Only this package names
config keys; it sits above the numerics (geometry, bem, timedomain) whose objects a Case holds.
"""
