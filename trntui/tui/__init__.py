"""The Textual app (`trntui open`): the only package that imports Textual."""
