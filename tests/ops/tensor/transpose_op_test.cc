// placeholder: transpose tests
