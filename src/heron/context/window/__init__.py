"""The window model: the tokens a request occupies, the window the server takes, the room for the answer.

Token counts and their calibration to the server's tokenizer, windows learnt from rejections,
the working budget that compacts a large window before it is full, the output cap, and the
budget notices the model reads. Nothing here decides what to cut; the stages that do read it."""
