"""SQL over loaded runs (DuckDB over Arrow tables of the profile's columns), and the tables export writes.

`trntui.query.tables` builds Arrow tables from a `Profile`; `trntui.query.database.Database` puts them in an
in-memory DuckDB; `trntui.query.views` holds the documented views. Imported only when a query runs.
"""
