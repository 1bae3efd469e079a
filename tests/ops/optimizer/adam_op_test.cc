// placeholder: adam tests
