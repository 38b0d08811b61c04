"""The one launch-level layer (docs/statistics.md), pure over records and policy: runs are handed
in, never read from the store here. Grouping launches into points (`points`), the robust
estimate and its interval (`launches`), evidence flags (`evidence`), what disturbed a launch
(`disturbance`), the drift from the earlier runs handed in (`history`), verdicts (`verdict`,
`compare`), every constant with its evidence (`policy`), the tidy table (`table`) and the
`Results` of a set of runs that every reporter renders (`view`). Nothing outside this package
re-derives launch-level figures."""
