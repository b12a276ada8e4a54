"""Propose-only tools for the agent frameworks teams already run: the OpenAI Agents SDK
(``for_openai_agents``), LangGraph (``for_langgraph``) and Pydantic AI (``for_pydantic_ai``).

Each framework's module is installed by its own extra (``countersign[openai-agents]``,
``countersign[langgraph]``, ``countersign[pydantic-ai]``) and imports that framework; this
package and ``proposing`` import none, so countersign itself never needs one. Every tool
proposes through the same contracts as the section assistants and answers with the
app-authored card; none approves or executes, and a framework's own approval pause is never
used: a person approves by id, and the application executes without the model.

(The package is not called ``agents``: that is the Agents SDK's own top-level name.)
"""
