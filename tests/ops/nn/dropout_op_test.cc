// placeholder: dropout tests
