// placeholder: split tests
