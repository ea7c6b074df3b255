"""Workers of the adapters part (bench/parts/adapters.py): one per framework, each run as a
process of its own (CrewAI's in build/crewai-venv, the Vercel AI SDK's by node), so that no
framework is ever imported by the suite's own process. Each prints one JSON line per trial."""
