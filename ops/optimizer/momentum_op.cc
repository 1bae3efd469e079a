// placeholder: momentum
