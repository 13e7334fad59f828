"""The rules every request obeys, as named checks, and the switch that says whether they are checked.

The switch is a module of its own so that a run which does not check the rules never loads them."""
