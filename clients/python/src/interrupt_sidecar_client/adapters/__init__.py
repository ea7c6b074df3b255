"""Adapters that tie agent frameworks' turns and tool calls to interrupt-sidecar executions.

One module per framework, each importing its framework only when it is itself imported
(``pip install 'interrupt-sidecar-client[langgraph]'``, ``[openai-agents]`` or ``[crewai]``):

* :mod:`interrupt_sidecar_client.adapters.langgraph` — LangChain ``create_agent`` and any
  LangGraph graph whose tools are LangChain tools;
* :mod:`interrupt_sidecar_client.adapters.openai_agents` — the OpenAI Agents SDK;
* :mod:`interrupt_sidecar_client.adapters.crewai` — CrewAI's ``Crew.kickoff`` and its tools;
* :mod:`interrupt_sidecar_client.adapters.claude` — Claude Code and the Claude Agent SDK,
  whose loop is not ours: hooks and ``mcpServers`` configs (it imports no SDK at all).

This package itself imports nothing: ``import interrupt_sidecar_client`` never loads a
framework. What the adapters share (the turn, its tool calls, the spawn helpers, the MCP
config rewrite) is framework-neutral, in :mod:`interrupt_sidecar_client.adapters._turn`.
"""
