-- Whether a failure result may be retried (issue 14): 0 for a step's
-- permanent error (FatalError, Error::retryable(false)), which fails the
-- step at once and halts its branch `job_error_not_retryable`; 1 for every
-- other failure and crash; NULL for successes and for results written
-- before this migration (read as retryable).
ALTER TABLE results ADD COLUMN retryable INTEGER;
