"""The controller layer: the generic runtime (`controller/runtime/`), the OME and AIM reconcilers (`controller/ome/`,
`controller/aim/`), and the composition root that wires them (`controller/app.py`)."""
