"""What a record is: its columns and the five Hudi meta columns (``schema``), how its record key and
partition path are made (``keygen``), and how two versions of one key merge (``merge``)."""
