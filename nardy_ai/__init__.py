"""nardy_ai: bots that play nardy (short nardy / backgammon and long nardy) against bots."""

__version__ = "0.1.0"
