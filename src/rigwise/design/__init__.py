"""Build: parts catalog, rig files and checks, power, costs, storage and the designer.

Entry points: ``load_rig`` / ``check_rig`` (rig check), ``rig_to_cluster`` (plan on a rig),
``design`` (the ``rigwise build`` designer, in ``rigwise.design.designer``).
"""
