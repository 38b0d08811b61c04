"""A twin of the measured machine: fit SMPI's link figures, piecewise latency and bandwidth factors
and thresholds to the launch-level pingpong estimates (fit), write them as a SimGrid platform with
its configuration and provenance (platform), and compare simulated with measured points
(validation). docs/simulation.md, "A twin of your machine"."""
