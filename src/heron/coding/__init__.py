"""The coding agent: tools, system prompt, skills, templates, settings and the runtime."""
