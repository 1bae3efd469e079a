// placeholder: gaussian_random tests
