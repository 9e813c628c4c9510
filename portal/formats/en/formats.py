"""One date format across the portal's pages, the admin and the finance pages: ISO dates, 24-hour times, in UTC
(TIME_ZONE), instead of the English locale's "Dec. 2, 2026, 7:48 a.m.". Read through FORMAT_MODULE_PATH."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i e"
TIME_FORMAT = "H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
MONTH_DAY_FORMAT = "j F"
YEAR_MONTH_FORMAT = "F Y"
FIRST_DAY_OF_WEEK = 1  # Monday
# What the admin's date and time fields accept: the format shown first.
DATE_INPUT_FORMATS = ["%Y-%m-%d"]
DATETIME_INPUT_FORMATS = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M", "%Y-%m-%d"]
TIME_INPUT_FORMATS = ["%H:%M:%S", "%H:%M:%S.%f", "%H:%M"]
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
