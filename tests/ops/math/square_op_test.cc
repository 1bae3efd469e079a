// placeholder: square tests
