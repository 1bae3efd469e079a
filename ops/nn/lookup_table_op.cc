// placeholder: lookup_table
