"""Planning: the layout planner, its reports and decision tree, and the launch-file generator."""
