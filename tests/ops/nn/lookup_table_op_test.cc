// placeholder: lookup_table tests
