"""northd's builders, one area of the Southbound database per module.

Every builder is a pure function of a `BuildInput` (and the data of the builders before
it) that returns plain data and fills `desired` tables; none writes to a database.
"""
