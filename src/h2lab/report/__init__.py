"""The report of an experiment: ``DIR/report.html`` (one self-contained file) plus CSV and
Parquet of the trials and resources. See docs/report.md."""

from h2lab.report.build import NoResults, write_report

__all__ = ["NoResults", "write_report"]
