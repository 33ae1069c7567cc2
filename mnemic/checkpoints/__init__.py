"""Saved run state for agent frameworks: checkpoints, kickoff outputs kept for replay, flow state.

Modules are named by framework (`crewai_json`, `crewai_sqlite`, `crewai_flow_state`,
`crewai_kickoffs` import CrewAI; `crewai_files`, `crewai_db`, `catalog` and `owners` import no
framework, so the operator CLI uses them). Nothing is imported here: `import mnemic` works
without any framework installed.
"""
