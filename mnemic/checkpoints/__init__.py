"""Saved run state for agent frameworks: checkpoints, kickoff outputs kept for replay, flow state.

Modules are named by framework (`crewai_json`, `crewai_sqlite`, `crewai_flow_state`,
`crewai_kickoffs` import CrewAI; `crewai_files`, `crewai_db`, `catalog` and `owners` import no
framework, so the operator CLI uses them). Nothing is imported here: `import mnemic` works
without any framework installed.

Secrets: kickoff outputs go to the run log, which redacts them (`core.runs`); a replay needs only
the outputs, so it works from the redacted text. Checkpoints and flow states are written
verbatim, because a restore must give back exactly the state that was saved: they are files at a
location the application chose, owned per user and erased with `forget(user_id=...)`.
"""
