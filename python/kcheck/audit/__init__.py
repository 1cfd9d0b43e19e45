"""kcheck audit: a generated kernel judged against the PyTorch code it
replaces, the reference being the contract (docs/audit.md).

task.py loads tasks and candidates (KernelBench's layout), trace.py turns
the reference into a tier and a torch_op contract, wrapper.py makes the
candidate one custom op the binding can see, child.py runs one candidate
under `kcheck run --torch`, driver.py runs them all and verdict.py and
table.py turn the binding's records into one verdict per candidate."""
