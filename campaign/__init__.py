"""Campaigns: many collector runs as jobs of the fleet's own scheduler (Slurm, Kubernetes).

Runs on a login node or a laptop, never on the device: standard library only. It reads a
campaign file (spec), writes the scheduler's input around the one task script (task.sh), keeps
a ledger of every planned task in the destination (ledger), and prints or resumes it
(``python -m campaign``). See docs/campaigns.md.
"""
