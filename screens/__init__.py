"""Textual screens of the wizard. They collect answers and show findings; they
never write files or run probes themselves."""
