"""A library called deep below the user's code, as a model's layers are: 21 nested calls of down()
under grow(), the innermost of which allocates a 64 KiB bytearray (malloc: past pymalloc's 512
bytes) and hands it back."""


def down(levels):
    if levels == 0:
        return bytearray(64 * 1024)  # ALLOCATE
    return down(levels - 1)


def grow():
    return down(20)
