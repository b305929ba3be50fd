"""GitHub glue: the sticky pull-request comment, the REST calls it makes, and findings new against a revision."""
