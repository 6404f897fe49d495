import os

# dbt loads the adapter's macros (macros/) and dbt_project.yml from this folder.
PACKAGE_PATH = os.path.dirname(__file__)
