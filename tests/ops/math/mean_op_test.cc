// placeholder: mean tests
